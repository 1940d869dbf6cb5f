"""``python -m llm4cov.train ARGS`` = ``llm4cov train ARGS``; the module form is what
``accelerate launch -m llm4cov.train ...`` runs on every GPU process."""

import sys

from llm4cov.cli.app import main

sys.exit(main(["train", *sys.argv[1:]]))
