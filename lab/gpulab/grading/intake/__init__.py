"""A class's submissions taken in: folders and zips, learners' names, private copies."""
