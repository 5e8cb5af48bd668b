"""setuptools entry point: only here because ``cffi_modules`` has no pyproject.toml spelling."""

from setuptools import setup

# cffi builds the core against CPython's stable ABI (agentgrammar/_core.abi3.so), so one wheel
# serves every CPython from 3.9 on.
setup(
    cffi_modules=["agentgrammar/_build.py:ffibuilder"],
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
