"""setuptools entry point: only here because ``cffi_modules`` has no pyproject.toml spelling."""

from setuptools import setup

setup(cffi_modules=["agentgrammar/_build.py:ffibuilder"])
