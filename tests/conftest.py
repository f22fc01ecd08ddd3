"""Markers of the test suite (registered so ``-m`` selects them without warnings)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts Isaac Lab (20-40 s per start on the 2-core CPU machine)")
    config.addinivalue_line("markers", "distributed: a torchrun (torch.distributed) or Ray job of several processes")
