# The nbval settings live in tests/ with the rest of the test configuration;
# this root file only registers them for notebooks anywhere in the repository.
pytest_plugins = ["tests.nbval_plugin"]
