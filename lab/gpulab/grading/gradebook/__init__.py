"""What a grading run decides, and the gradebook that keeps it: one SQLite file.

`Gradebook` is one connection to the file, used by the one thread that writes a
run's grades; `GradebookError` says why a file cannot be used. The modules:

- `verdict`: the records a run decides (`CheckRow`, `ExerciseGrade`,
  `LearnerGrades`), `verdict`, which sorts a checks report into them, and
  `plain`, the one place learner text is made storable and printable;
- `store`: `Gradebook`, written a grade at a time, each in one transaction;
- `rows`: rows and records converted both ways, by name (`StoredGrade`,
  `KnownExercise`, `DeadRun`);
- `schema`: the tables as SQL and their version (`SCHEMA_VERSION`).

The rule of this package: it stores and reads what the checks reported and
runs nothing; it imports the checks' vocabulary (`gpulab.grading.checks.protocol`)
and the intake's names, never the class run or the sandbox.
"""

from gpulab.grading.gradebook.rows import DeadRun, KnownExercise, StoredGrade
from gpulab.grading.gradebook.schema import SCHEMA_VERSION
from gpulab.grading.gradebook.store import Gradebook, GradebookError

__all__ = [
    "SCHEMA_VERSION",
    "DeadRun",
    "Gradebook",
    "GradebookError",
    "KnownExercise",
    "StoredGrade",
]
