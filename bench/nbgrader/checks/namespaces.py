"""nbgrader's test cells for the namespaces exercise.

Ported from exercises/containers/test_namespaces.py (visible) and
solutions/containers/test_namespaces_hidden.py (hidden), one test cell per
check, worth the same points; they call the learner's functions directly.

As in gpulab, the functions read recorded machines: the checker builds each
machine's tree (/proc/self/ns and /proc/1/ns as links, /proc/1/comm, the
marker files, /proc/self/cgroup) in a temporary folder with
`gpulab.grading.checks.machines.materialize`, changed where a hidden check changes
it, and passes the folder as `root`. "This machine" is the kernel the
functions run in, as gpulab's is the worker: the checker reads /proc/<kernel's
pid> and /proc/1 from the same process. "Raises ValueError" is told by the
exception's type (a subclass counts). The hidden checks draw fresh inputs per
run from a seed of their own (GPULAB_CHECK_SEED=<n> replays one).
"""
# ruff: noqa: F821, RUF100  (the notebook's answer cells define the learner's functions)

# %% checker
import atexit
import contextlib
import os
import random
import re
import secrets
import shutil
import tempfile
from pathlib import Path

from gpulab.grading.checks.machines import load_machine as check_load_machine
from gpulab.grading.checks.machines import materialize as check_materialize

CHECK_FOLDER = Path(tempfile.mkdtemp(prefix="nbgrader-machines-"))
atexit.register(shutil.rmtree, CHECK_FOLDER, True)


def check_machine(name, *, files=None, links=None):
    """Recorded machine `name` built in a folder of its own (changed by `files` and `links`);
    its root, as gpulab's worker names it."""
    root = check_materialize(
        name, Path(tempfile.mkdtemp(prefix="machine-", dir=CHECK_FOLDER)), files=files, links=links
    )
    return str(root) + "/"


def check_new_seed():
    given = os.environ.get("GPULAB_CHECK_SEED", "").strip()
    return int(given) if given.isdigit() else secrets.randbits(32)


CHECK_SEED = check_new_seed()
CHECK_SEEN = f"(seed {CHECK_SEED})"


def check_rng(check):
    """The random inputs of one check: the run's seed and the check's name decide them."""
    return random.Random(f"{CHECK_SEED}:{check}")


@contextlib.contextmanager
def check_telling(about):
    """Where the learner's code fails on drawn inputs, say which inputs, and the seed."""
    try:
        yield
    except NotImplementedError:
        raise
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n({about} {CHECK_SEEN})") from exc


# ---- the visible checks' machines and judges ----------------------------------------------------
CHECK_MACHINES = ("firecracker-vm", "docker-container", "k8s-hostpid", "two-socket")
CHECK_MARKERS = ("/.dockerenv", "/run/.containerenv")
CHECK_KINDS = (
    "differs from PID 1",
    "PID 1 command",
    "file exists",
    "file missing",
    "cgroup",
    "initial pid namespace",
)
CHECK_LINK_TYPE = {"pid_for_children": "pid", "time_for_children": "time"}


def check_machines():
    """Each recorded machine with what the exercise's functions should give on it."""
    return [(m, m.want("namespaces")) for m in map(check_load_machine, CHECK_MACHINES)]


def check_show(differ):
    return "unreadable" if differ is None else ", ".join(differ) or "none"


def check_judge_fact(fact, facts):
    """Why one evidence string is not true of a machine whose `facts` are known; None when
    it is."""
    if not isinstance(fact, str):
        return f"{fact!r} is not a string"
    kind, colon, value = fact.partition(": ")
    if not colon or kind not in CHECK_KINDS:
        return (
            f'{fact!r} is not in one of the table\'s forms ("<kind>: <value>", kind one '
            f"of {', '.join(CHECK_KINDS)})"
        )
    value = value.strip()
    if kind == "differs from PID 1":
        truth = facts["differs"]
        if value in ("unreadable", "none"):
            claimed = None if value == "unreadable" else []
        else:
            claimed = sorted(name.strip() for name in value.split(","))
        if claimed != truth:
            return (
                f'{fact!r}, but comparing the links gives "differs from PID 1: {check_show(truth)}"'
            )
    elif kind == "PID 1 command":
        comm = facts["pid1_comm"]
        if comm != value:
            return (
                f"{fact!r}, but /proc/1/comm holds {comm!r}"
                if comm is not None
                else f"{fact!r}, but /proc/1/comm cannot be read there"
            )
    elif kind in ("file exists", "file missing"):
        if value not in CHECK_MARKERS:
            return f"{fact!r}: only the marker files {', '.join(CHECK_MARKERS)} count here"
        if facts["markers"][value] != (kind == "file exists"):
            return f"{fact!r}, but {value} {'is missing' if kind == 'file exists' else 'exists'}"
    elif kind == "cgroup":
        if value not in facts["cgroup_paths"]:
            return (
                f"{fact!r}, but the paths in /proc/self/cgroup are "
                f"{sorted(set(facts['cgroup_paths']))}"
            )
    elif value not in ("yes", "no") or (value == "yes") != facts["initial_pid_ns"]:
        return (
            f"{fact!r}, but this process's pid namespace "
            f"{'is' if facts['initial_pid_ns'] else 'is not'} the initial one"
        )
    return None


def check_judge_verdict(verdict, allowed, facts):
    """Why `verdict` breaks the notebook's two rules on a machine; None when it keeps them."""
    if verdict not in (True, False):
        return f"the verdict is {verdict!r}: say True or False"
    if verdict in allowed:
        return None
    if verdict is False:
        return (
            "it says False, but the pid namespace there is not the initial one, which "
            "rules out False"
            if not facts["initial_pid_ns"]
            else "it says False where the checks expect True"
        )
    return (
        "it says True, but no deciding sign is present there: /.dockerenv and PID 1's "
        "command do not decide"
    )


def check_evidence_of(got, about):
    evidence = got.get("evidence") if isinstance(got, dict) else None
    assert isinstance(evidence, list) and evidence, (
        f"in_container(root) gave no list of evidence on {about}: {got!r}"
    )
    return evidence


# ---- the hidden checks: link targets, changed machines, this machine -----------------------------
CHECK_INITIAL_PID_NS = 0xEFFFFFFC
CHECK_RUNTIME_WORDS = ("docker", "kubepods", "libpod", "containerd", "crio", "lxc")
CHECK_HOST = {
    "cgroup": 4026531835,
    "ipc": 4026531839,
    "mnt": 4026531832,
    "net": 4026531833,
    "pid": 4026531836,
    "pid_for_children": 4026531836,
    "time": 4026531834,
    "time_for_children": 4026531834,
    "user": 4026531837,
    "uts": 4026531838,
}
CHECK_SCOPE = "/user.slice/user-1000.slice/session-3.scope"
CHECK_TYPES = ("cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts")
CHECK_MOVES_THE_CALLER = ("cgroup", "ipc", "net", "user", "uts")


def check_number(rng):
    """An inode number: mostly as the kernel gives them, else of any length up to 64 bits."""
    if rng.random() < 0.4:
        return rng.randint(4026531830, 4026539999)
    digits = rng.randint(1, 20)
    return rng.randint(10 ** (digits - 1) if digits > 1 else 0, min(10**digits - 1, 2**64 - 1))


def check_malformed(rng):
    """A link target that holds no namespace number, and what is wrong with it."""
    kind, n = rng.choice(CHECK_TYPES), check_number(rng)
    return rng.choice(
        (
            (
                "anon_inode:["
                + rng.choice(("eventpoll", "signalfd", "timerfd", "pidfd", "io_uring"))
                + "]",
                "an fd link whose brackets hold a name",
            ),
            (f"{kind}:[0x{n:x}]", "a hexadecimal number"),
            (f"{kind}:[{n}.{rng.randint(1, 9)}]", "a fraction"),
            (f"{kind}:[]", "empty brackets"),
            (f"{kind}:[{n}", "no closing bracket"),
            (f"{kind}:{n}]", "no opening bracket"),
            (f"{kind}:{n}", "no brackets"),
            (f"/proc/self/ns/{kind}", "a path, not a link target"),
            ("anon_inode:bpf-map", "an fd link without brackets"),
        )
    )


def check_links(pid, inodes):
    return {
        f"proc/{pid}/ns/{name}": f"{CHECK_LINK_TYPE.get(name, name)}:[{number}]"
        for name, number in inodes.items()
    }


def check_case(machine, *, links=None, files=None, ids, differ, facts, verdicts, what):
    """The problems of the learner's answers on one changed machine."""
    root = check_machine(machine, links=links, files=files)
    problems = []
    got = namespace_ids("self", root)
    if got != ids:
        problems.append(f"namespace_ids() returned {got!r}, but the links say {ids!r}")
    got = differs_from_pid1(root)
    if got != differ:
        problems.append(f"differs_from_pid1() returned {got!r}, not {differ!r}")
    answer = in_container(root)
    evidence = answer.get("evidence") if isinstance(answer, dict) else None
    for fact in evidence if isinstance(evidence, list) else [f"no evidence in {answer!r}"]:
        why = check_judge_fact(fact, {**facts, "differs": differ})
        if why:
            problems.append(why)
    verdict = answer.get("in_container") if isinstance(answer, dict) else answer
    why = check_judge_verdict(verdict, verdicts, facts)
    if why:
        problems.append(why)
    return [f"in {what}: {p}" for p in problems]


def check_shown_links(links):
    return ", ".join(f"/{path} -> {target}" for path, target in links.items())


class CheckInodes:
    """Inode numbers for namespaces made after boot, each drawn once."""

    def __init__(self, rng, taken):
        self.rng, self.taken = rng, set(taken)

    def new(self, low=4026532000, high=4026539999):
        while (number := self.rng.randint(low, high)) in self.taken:
            pass
        self.taken.add(number)
        return number


def check_random_unshares(rng):
    """`unshare --pid` without and with `--fork --mount-proc` on a host, with random other
    namespaces, inode numbers and PID 1 command: the changes to two-socket and their meaning."""
    inodes = CheckInodes(rng, set(CHECK_HOST.values()))
    host = {
        **CHECK_HOST,
        "mnt": inodes.new(4026531840, 4026531999),
        "net": inodes.new(4026531840, 4026531999),
    }
    facts = {
        "pid1_comm": "systemd",
        "markers": {"/.dockerenv": False, "/run/.containerenv": False},
        "cgroup_paths": ["/", "/user.slice", CHECK_SCOPE],
        "initial_pid_ns": True,
    }
    cases = []
    extra = sorted(rng.sample(CHECK_MOVES_THE_CALLER, rng.randint(0, 3)))
    timed = rng.random() < 0.3
    shell = {**host, "pid_for_children": inodes.new(), **{name: inodes.new() for name in extra}}
    if timed:
        shell["time_for_children"] = inodes.new()
    flags = " ".join(f"--{name}" for name in ["pid", *extra, *(["time"] if timed else [])])
    cases.append(
        {
            "links": {**check_links("self", shell), **check_links("1", host)},
            "files": None,
            "ids": shell,
            "differ": sorted(name for name in shell if shell[name] != host[name]),
            "facts": facts,
            "verdicts": [False],
            "what": f"a shell on a host after unshare {flags} (without --fork)",
        }
    )
    extra = sorted(rng.sample(CHECK_MOVES_THE_CALLER, rng.randint(0, 3)))
    timed = rng.random() < 0.3
    pid, own = inodes.new(), dict(host)
    own.update(
        {
            "pid": pid,
            "pid_for_children": pid,
            "mnt": inodes.new(),
            **{name: inodes.new() for name in extra},
        }
    )
    if timed:
        own["time"] = own["time_for_children"] = inodes.new()
    comm = rng.choice(("bash", "sh", "zsh", "dash", "python3", "sleep"))
    flags = " ".join(
        f"--{name}" for name in ["pid", "fork", "mount-proc", *extra, *(["time"] if timed else [])]
    )
    cases.append(
        {
            "links": {**check_links("self", own), **check_links("1", own)},
            "files": {"proc/1/comm": comm + "\n"},
            "ids": own,
            "differ": [],
            "facts": {**facts, "pid1_comm": comm, "initial_pid_ns": False},
            "verdicts": [True],
            "what": f"a process under unshare {flags} {comm} (PID 1 is {comm})",
        }
    )
    return cases


def check_read_ns(pid):
    folder = Path(f"/proc/{pid}/ns")
    try:
        targets = {entry.name: os.readlink(entry) for entry in folder.iterdir()}
    except OSError:
        return None
    found = {}
    for name, target in targets.items():
        match = re.fullmatch(r"[a-z_]+:\[(\d+)\]", target)
        assert match, f"the checker cannot read {folder / name} -> {target!r}"
        found[name] = int(match.group(1))
    return found


def check_facts(pid, one):
    """This machine's facts as the judge takes them, for the process `pid`."""
    mine, theirs = check_read_ns(pid), check_read_ns(one)
    assert mine is not None, f"the checker cannot read /proc/{pid}/ns"
    differ = (
        None
        if theirs is None
        else sorted(name for name in mine if name in theirs and mine[name] != theirs[name])
    )
    try:
        comm = Path(f"/proc/{one}/comm").read_text().strip()
    except OSError:
        comm = None
    paths = [
        line.split(":", 2)[2]
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        if line.count(":") >= 2
    ]
    return {
        "ids": mine,
        "differs": differ,
        "pid1_comm": comm,
        "markers": {m: os.path.exists(f"/proc/{pid}/root{m}") for m in CHECK_MARKERS},
        "cgroup_paths": paths,
        "initial_pid_ns": mine["pid"] == CHECK_INITIAL_PID_NS,
    }


def check_verdicts(facts):
    """The verdicts the notebook's two rules allow, from the facts."""
    if not facts["initial_pid_ns"]:
        return [True]
    runtime = any(
        part.startswith(CHECK_RUNTIME_WORDS) and not part.endswith(".service")
        for path in facts["cgroup_paths"]
        for part in path.split("/")
    )
    deciding = (
        bool(set(facts["differs"] or []) & {"pid", "mnt"})
        or runtime
        or facts["markers"]["/run/.containerenv"]
    )
    return [False, True] if deciding else [False]


# %% test test_ns_inode_reads_recorded_links points=1 needs=ns_inode
for _, want in check_machines():
    for name, number in want["ids"].items():
        target = f"{CHECK_LINK_TYPE.get(name, name)}:[{number}]"
        got = ns_inode(target)
        assert got == number, (
            f"ns_inode({target!r}) returned {got!r}, but the number in the brackets is "
            f"{number}: return it as an int, without the type or the brackets"
        )

# %% test test_namespace_ids points=2 needs=namespace_ids,ns_inode
for machine, want in check_machines():
    ids = want["ids"]
    got = namespace_ids("self", check_machine(machine.name))
    assert isinstance(got, dict), (
        f"namespace_ids() returned {type(got).__name__}, not a dict of name -> inode number"
    )
    missing = sorted(set(ids) - set(got))
    extra = sorted(set(got) - set(ids))
    assert not missing and not extra, (
        f"on {machine.about}: namespace_ids() has the names {sorted(got)}, but /proc/self/ns "
        f"lists {sorted(ids)}"
    )
    wrong = {name: got[name] for name in ids if got[name] != ids[name]}
    assert not wrong, f"on {machine.about}: " + "; ".join(
        f"namespace_ids()[{name!r}] is {value!r}, but /proc/self/ns/{name} points to {ids[name]}"
        for name, value in wrong.items()
    )

# %% test test_differs_from_pid1 points=2 needs=differs_from_pid1,namespace_ids,ns_inode
for machine, want in check_machines():
    truth = want["differs_from_pid1"]
    got = differs_from_pid1(check_machine(machine.name))
    if truth is None:
        assert got is None, (
            f"on {machine.about}, differs_from_pid1() returned {got!r}, but PID 1's links "
            "cannot be read there, so the honest answer is None"
        )
    else:
        assert got == truth, (
            f"on {machine.about}, differs_from_pid1() returned {got!r}, but comparing "
            f"/proc/self/ns with /proc/1/ns gives {truth!r}"
        )

# %% test test_in_container_shape points=1 needs=all
got = in_container(check_machine("docker-container"))
assert isinstance(got, dict) and set(got) == {"in_container", "evidence"}, (
    f"in_container() returned {got!r}: return a dict with exactly the keys 'in_container' and "
    "'evidence'"
)
assert got["in_container"] in (True, False), (
    f"the verdict is {got['in_container']!r}: use True or False"
)
assert isinstance(got["evidence"], list) and got["evidence"], (
    f"the evidence is {got['evidence']!r}: give a non-empty list of strings, one fact each"
)

# %% test test_in_container_evidence_is_true points=3 needs=all
for machine, want in check_machines():
    got = in_container(check_machine(machine.name))
    evidence = check_evidence_of(got, machine.about)
    problems = [why for why in (check_judge_fact(f, want["facts"]) for f in evidence) if why]
    assert not problems, f"on {machine.about}, evidence that is not true there: " + "; ".join(
        problems
    )

# %% test test_in_container_weighs_several_signs points=2 needs=all
for machine, _ in check_machines():
    got = in_container(check_machine(machine.name))
    evidence = check_evidence_of(got, machine.about)
    kinds = {fact.partition(": ")[0] for fact in evidence if isinstance(fact, str)}
    kinds = {
        "marker file" if kind in ("file exists", "file missing") else kind
        for kind in kinds
        if kind in CHECK_KINDS
    }
    assert "differs from PID 1" in kinds, (
        f"on {machine.about}, the evidence does not say how this process compares with PID 1"
    )
    others = sorted(kinds - {"differs from PID 1"})
    assert len(others) >= 2, (
        f"on {machine.about}, besides PID 1 the evidence cites only {others or 'nothing'}: "
        "add at least two other kinds of sign"
    )

# %% test test_in_container_verdict points=2 needs=all
problems = []
for machine, want in check_machines():
    got = in_container(check_machine(machine.name))
    verdict = got.get("in_container") if isinstance(got, dict) else got
    why = check_judge_verdict(verdict, want["verdicts"], want["facts"])
    if why:
        problems.append(f"on {machine.about}: {why}")
assert not problems, "; ".join(problems)

# %% hidden test_ns_inode_other_links points=2 needs=ns_inode
fixed = [
    ("pid:[4026531836]", 4026531836),
    ("net:[4026532291]", 4026532291),
    ("time:[4026531834]", 4026531834),
    ("cgroup:[4026531835]", 4026531835),
    ("user:[4026532856]", 4026532856),
    ("mnt:[1]", 1),
    ("ipc:[18446744073709551615]", 2**64 - 1),
]
rng = check_rng("ns_inode_other_links")
drawn = [
    (f"{kind}:[{number}]", number)
    for kind, number in ((rng.choice(CHECK_TYPES), check_number(rng)) for _ in range(24))
]
for n, (target, want) in enumerate(fixed + drawn):
    if n < len(fixed):
        got = ns_inode(target)
    else:
        with check_telling(f"ns_inode was given {target!r}"):
            got = ns_inode(target)
    assert got == want, f"ns_inode({target!r}) returned {got!r}, not {want}" + (
        f" {CHECK_SEEN}" if n >= len(fixed) else ""
    )

# %% hidden test_ns_inode_rejects_other_links points=1 needs=ns_inode
rng = check_rng("ns_inode_rejects_other_links")
kind, number = rng.choice(CHECK_TYPES), rng.randint(4026531830, 4026539999)
valid = f"{kind}:[{number}]"
with check_telling(f"ns_inode was given {valid!r}"):
    got = ns_inode(valid)
assert got == number, f"ns_inode({valid!r}) must return {number} first {CHECK_SEEN}"
fixed = [
    ("anon_inode:[eventpoll]", "an fd link whose brackets hold a name"),
    ("socket:[12345", "no closing bracket"),
    ("/dev/null", "a path"),
]
drawn = [check_malformed(rng) for _ in range(8)]
for target, what in fixed + drawn:
    try:
        got = ns_inode(target)
    except Exception as exc:
        assert isinstance(exc, ValueError), (
            f"ns_inode({target!r}) ({what}) failed, but not with ValueError: "
            f"{type(exc).__name__} {CHECK_SEEN}"
        )
        continue
    raise AssertionError(
        f"ns_inode({target!r}) returned {got!r}, but that is not a namespace "
        f"link target ({what}): raise ValueError {CHECK_SEEN}"
    )

# %% hidden test_unshare_without_and_with_fork points=2 needs=all
facts = {
    "pid1_comm": "systemd",
    "markers": {"/.dockerenv": False, "/run/.containerenv": False},
    "cgroup_paths": ["/", "/user.slice", CHECK_SCOPE],
    "initial_pid_ns": True,
}
children = {**CHECK_HOST, "pid_for_children": 4026532770}
problems = check_case(
    "two-socket",
    links=check_links("self", children),
    ids=children,
    differ=["pid_for_children"],
    facts=facts,
    verdicts=[False],
    what="a shell after unshare --pid (its children get the new pid namespace)",
)
own = {**CHECK_HOST, "pid": 4026532771, "pid_for_children": 4026532771, "mnt": 4026532769}
problems += check_case(
    "two-socket",
    links={**check_links("self", own), **check_links("1", own)},
    files={"proc/1/comm": "bash\n"},
    ids=own,
    differ=[],
    facts={**facts, "pid1_comm": "bash", "initial_pid_ns": False},
    verdicts=[True],
    what="a shell started by unshare --pid --fork --mount-proc (PID 1 is bash)",
)
assert not problems, "; ".join(problems)
shown = []
for case in check_random_unshares(check_rng("unshare_without_and_with_fork")):
    links = check_shown_links(case["links"])
    with check_telling(
        f"on a copy of two-socket changed into {case['what']}, with the links {links}"
    ):
        found = check_case("two-socket", **case)
    if found:
        problems += found
        shown.append(links)
assert not problems, "; ".join(problems) + f" (the links: {'; '.join(shown)}) {CHECK_SEEN}"

# %% hidden test_pid1_hidden points=1 needs=all
want = check_load_machine("docker-container").want("namespaces")
problems = check_case(
    "docker-container",
    files={"proc/1": None},
    ids=want["ids"],
    differ=None,
    facts={**want["facts"], "pid1_comm": None},
    verdicts=[True],
    what="a container whose /proc shows no PID 1 (hidepid=2)",
)
assert not problems, "; ".join(problems)
rng = check_rng("pid1_hidden")
inodes = CheckInodes(rng, set(CHECK_HOST.values()))
ids = {
    name: number if number in CHECK_HOST.values() else inodes.new()
    for name, number in want["ids"].items()
}
ids["pid_for_children"] = ids["pid"]
whole = rng.random() < 0.5
what = (
    "a container whose /proc shows no PID 1 (hidepid=2)"
    if whole
    else "a container where PID 1's command can be read but not its namespace links"
)
links = check_shown_links(check_links("self", ids))
with check_telling(f"in {what}, with the links {links}"):
    problems = check_case(
        "docker-container",
        links=check_links("self", ids),
        files={"proc/1": None} if whole else {"proc/1/ns": None},
        ids=ids,
        differ=None,
        facts={**want["facts"], "pid1_comm": None if whole else want["facts"]["pid1_comm"]},
        verdicts=[True],
        what=what,
    )
assert not problems, "; ".join(problems) + f" (the links: {links}) {CHECK_SEEN}"

# %% hidden test_this_machine points=2 needs=all
facts = check_facts(os.getpid(), 1)
problems = []
got = namespace_ids()
if got != facts["ids"]:
    problems.append(f"namespace_ids() returned {got!r}, but /proc/self/ns says {facts['ids']!r}")
got = differs_from_pid1()
if got != facts["differs"]:
    problems.append(
        f"differs_from_pid1() returned {got!r}, but the checker finds {facts['differs']!r}"
    )
answer = in_container()
evidence = answer.get("evidence") if isinstance(answer, dict) else None
for fact in evidence if isinstance(evidence, list) else [f"no evidence in {answer!r}"]:
    why = check_judge_fact(fact, facts)
    if why:
        problems.append(why)
verdict = answer.get("in_container") if isinstance(answer, dict) else answer
why = check_judge_verdict(verdict, check_verdicts(facts), facts)
if why:
    problems.append(why)
assert not problems, "on the machine the checks run on: " + "; ".join(problems)

# %% hidden test_in_container_cites_the_pid_comparison_it_makes points=1 needs=all
differ = differs_from_pid1()
got = in_container()
shown = "unreadable" if differ is None else ", ".join(differ) or "none"
facts = [
    f
    for f in got.get("evidence", [])
    if isinstance(f, str) and f.startswith("differs from PID 1: ")
]
assert facts == [f"differs from PID 1: {shown}"], (
    f"differs_from_pid1() returned {differ!r}, so in_container() should cite it once as "
    f'"differs from PID 1: {shown}", but its evidence has {facts!r}'
)
try:
    readable = all(os.readlink(e) for e in Path("/proc/1/ns").iterdir())
except OSError:
    readable = False
assert (differ is None) == (not readable), (
    f"differs_from_pid1() returned {differ!r}, but PID 1's links are "
    f"{'readable' if readable else 'not readable'} here"
)
