from .daemon import main

main()
