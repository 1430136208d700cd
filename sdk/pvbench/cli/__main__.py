from pvbench.cli.main import app

app(prog_name="pvbench")
