from pandafs.cli import main

main()
