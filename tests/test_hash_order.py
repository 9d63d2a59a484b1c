"""What contextfold sends does not depend on Python's string hash seed.

Each process hashes strings with its own random seed, so iterating a set of
tokens visits them in a different order in every run. A float sum taken in
that order differs in its last bit, and where two lines tie, that bit decided
which one a cleared output kept: a replay of the same session gave different
requests from run to run. The check runs in fresh interpreters with different
seeds, the only way to vary it.
"""

from __future__ import annotations

import os
import subprocess
import sys

# Line 1's weight is 0.1 + 0.2 + 0.3, which is 0.6 or 0.6000000000000001 depending on the order it is summed in;
# line 0's is 0.6. Only one fits, so the order decides which is kept unless the sum's order is fixed.
PROGRAM = """
from contextfold.pipeline.importance import References, referenced_lines
weights = {"alpha_1": 0.1, "beta_2": 0.2, "gamma_3": 0.3, "delta_4": 0.6}
refs = References(uses=dict(weights), last={token: 5 for token in weights}, turns=5)
index = {"delta_4": 0, "alpha_1": 1, "beta_2": 1, "gamma_3": 1}
print(referenced_lines("delta_4\\nalpha_1 beta_2 gamma_3", refs, max_chars=25, index=index))
"""


def test_the_lines_a_cleared_output_keeps_do_not_depend_on_the_hash_seed() -> None:
    answers = set()
    for seed in range(10):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        run = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, check=True)
        answers.add(run.stdout.strip())
    assert len(answers) == 1, answers
