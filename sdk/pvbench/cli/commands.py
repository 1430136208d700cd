from pvbench.cli.main import app  # noqa
