"""What the tests share, one module per concern; no test lives here.

tests/ is on ``sys.path`` through its conftest (pytest's rootdir-relative
import), so a test imports ``from helpers.terminal import Terminal``:

    adversarial_class  hostile learners for `gpulab grade`, built from the roofline exercise
    chromium           Debian's Chromium, headless, through Playwright
    instructor_home    an instructor's home folder with a course checkout and its venv
    intake_attacks     hostile zips and notebooks for the intake
    learner_env        the wheel built and installed in fresh environments, run as a learner
    probes             the probe tests' recordings and CUDA device
    run_attacks        attacks on a grading run as a whole
    squares_course     the small "squares" exercise of the grading and app tests
    terminal           a real terminal: the one tmux helper, on a private server
    topo_text          a parser of `nvidia-smi topo -m` text
    tui                the app tests' fixture course, Pilot waits and screen text
"""
