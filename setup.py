"""The one compiled part of mixplane (everything else is in pyproject.toml): the loader's
kernel that copies document pieces into sequences without the GIL."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("mixplane.load._pieces", ["src/mixplane/load/_pieces.c"])])
