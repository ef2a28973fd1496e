import LatticeCLI

LatticeCommand.main()
