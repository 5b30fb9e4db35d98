"""The intake of a class's submissions: folders and zips in, one private copy per notebook out.

`collect(submissions, exercises, work)` finds each learner's notebooks and
copies them into ``work``; grading reads nothing else. The modules:

- `submissions`: `collect`, the `Intake` it returns (one `LearnerSubmission`
  per learner) and `IntakeError`;
- `entries`: a folder or zip listed as entries, each entry's bytes copied
  under limits (the one place submissions are read);
- `zipread`: a hostile zip's end records and directory counted before
  `zipfile` reads them (`ZipLimits`);
- `handin`: one learner's hand-in, and its limits (`MAX_PROBLEMS`);
- `names`: learners' names and slugs, and text cut to be shown
  (`MAX_NAME`, `MAX_TEXT`, `cut`).

The rule of this package: it reads submissions and nothing of the checks but
the notebook's size limit (`gpulab.grading.checks.notebook.MAX_BYTES`); it
runs no learner code and imports neither the gradebook nor the class run.
"""

from gpulab.grading.intake.handin import MAX_PROBLEMS
from gpulab.grading.intake.names import Holder
from gpulab.grading.intake.submissions import Intake, IntakeError, LearnerSubmission, collect
from gpulab.grading.intake.zipread import ZipLimits

__all__ = [
    "MAX_PROBLEMS",
    "Holder",
    "Intake",
    "IntakeError",
    "LearnerSubmission",
    "ZipLimits",
    "collect",
]
