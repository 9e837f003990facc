import os

import pytest
from hypothesis import HealthCheck, settings

# Property tests: deterministic in CI, no deadline (numba compiles on first call).
settings.register_profile("ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(12345)
