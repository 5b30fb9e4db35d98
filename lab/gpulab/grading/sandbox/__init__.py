"""The sandbox around learner code: bubblewrap, the launcher (`jail`), rlimits, cgroups."""
