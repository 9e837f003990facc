import pytest

from tests.fabric.fabrics import SMALL, small


@pytest.fixture(params=sorted(SMALL))
def topo(request):
    """Each small fabric in turn."""
    return small(request.param)
