"""Helpers the tests share (imported as ``helpers.<module>``; tests/ is on
sys.path through its conftest.py)."""
