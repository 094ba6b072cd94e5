from pdd_plan.cli.app import main

main()
