from pvbench.cli.main import main

main()
