"""The ``tfrec-tricks`` command line: one module per command.

Run ``tfrec-tricks --help`` or ``tfrec-tricks train --help``. The flags of
``train``, ``ablation`` and ``tune`` are generated from the fields of
``TrainConfig`` and ``ModelConfig`` (``tfrec_tricks.cli.options``).
"""

import sys

from tfrec_tricks.cli.quiet import load_tensorflow
from tfrec_tricks.keras_version import use_legacy_keras

# The command line's Keras-version check: tf-keras is chosen before
# anything resolves tf.keras, also when this package is imported.
use_legacy_keras()


def main(argv: list[str] | None = None) -> int:
    """Runs one ``tfrec-tricks`` command; returns its exit code.

    Exit codes: 0 done, 1 an error with a message (bad data, a refused run
    directory, a failed export), 2 bad arguments (argparse), 130
    interrupted (the run resumes when the same command runs again).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    # TensorFlow's start-up lines stay off the terminal.
    load_tensorflow(verbose="--verbose" in argv)
    from tfrec_tricks.cli.parser import COMMANDS, build_parser, parse

    parser = build_parser()
    args, _ = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        args = parse(parser, argv)
        return COMMANDS[args.command].run(args)
    except KeyboardInterrupt:
        print(
            "\ninterrupted: run the same command again to resume from the "
            "last completed epoch.",
            file=sys.stderr,
        )
        return 130
    except (ValueError, OSError, ImportError) as error:
        print(f"tfrec-tricks {args.command}: error: {error}", file=sys.stderr)
        return 1
