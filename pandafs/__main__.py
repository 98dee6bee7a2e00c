from pandafs.cli import program

program()
