#!/usr/bin/env python3
"""Runs one test method of one integration test file: run.py FILE METHOD.

ctest gets one test per method this way, and each test starts its own registry.
"""
import importlib.util
import os
import sys
import unittest

path, method = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(path))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "fixtures"))
spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
suite = unittest.TestSuite()
for name in dir(mod):
    obj = getattr(mod, name)
    if isinstance(obj, type) and issubclass(obj, unittest.TestCase) and hasattr(obj, method):
        suite.addTest(obj(method))
if suite.countTestCases() != 1:
    sys.exit("run.py: expected exactly one test %s in %s, found %d"
             % (method, path, suite.countTestCases()))
result = unittest.TextTestRunner(verbosity=2).run(suite)
if result.skipped and not (result.failures or result.errors):
    # A skipped integration test must not pass silently: ctest reports it as skipped.
    print("SKIPPED:", result.skipped[0][1])
    sys.exit(77)
sys.exit(0 if result.wasSuccessful() else 1)
