"""`python -m tomori_cog`: the `tomori` command, for an install whose scripts are not on PATH."""

from tomori_cog.cli import entry

if __name__ == "__main__":
    entry()
