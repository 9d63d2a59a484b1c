"""A toy provider with no SDK, in one folder and one registry line: the example ``docs/architecture.md`` shows."""

from contextfold.adapters import register

from .provider import Toy

TOY = register(Toy())
