"""The examples in mixplane's docstrings run and print what they show.

Examples that need a service, a cluster or data they do not make are marked
`# doctest: +SKIP` where they are written.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import mixplane


def modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(mixplane.__path__, prefix="mixplane.")
        if not info.name.endswith("__main__")
    )


@pytest.mark.parametrize("name", modules())
def test_the_examples_of(name: str):
    module = importlib.import_module(name)
    examples = [test for test in doctest.DocTestFinder().find(module) if test.examples]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for example in examples:
        runner.run(example)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"
