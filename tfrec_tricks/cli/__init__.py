"""The ``tfrec-tricks`` command line: one module per command.

Run ``tfrec-tricks --help`` or ``tfrec-tricks train --help``. The flags of
``train``, ``ablation`` and ``tune`` are generated from the fields of
``TrainConfig`` and ``ModelConfig`` (``tfrec_tricks.cli.options``).
"""

import signal
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
    interrupted at any moment, start-up included (a run resumes when the
    same command runs again).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    command = None
    try:
        # TensorFlow's start-up lines stay off the terminal.
        load_tensorflow(verbose="--verbose" in argv)
        from tfrec_tricks.cli.parser import COMMANDS, build_parser, parse

        parser = build_parser()
        args, _ = parser.parse_known_args(argv)
        command = args.command
        if command is None:
            parser.print_help()
            return 2
        args = parse(parser, argv)
        return COMMANDS[command].run(args)
    except KeyboardInterrupt:
        return _interrupted(command)
    except (ValueError, OSError, ImportError) as error:
        print(f"tfrec-tricks {command}: error: {error}", file=sys.stderr)
        return 1


def _interrupted(command: str | None) -> int:
    # A second Ctrl-C while the message prints must not end in a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    resume = {
        "train": " Run the same command again to resume from the last "
        "completed epoch.",
        "tune": " Run the same command again to resume the search.",
        "ablation": " Run the same command again: finished rows are reused.",
    }.get(command, "")
    print(f"\ninterrupted.{resume}", file=sys.stderr)
    return 130
