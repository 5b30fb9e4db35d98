"""One exercise's checks on one notebook: the runner, the pytest plugin, the workers."""
