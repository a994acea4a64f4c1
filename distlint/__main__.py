from distlint.cli import main

main()
