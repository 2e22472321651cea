"""launcher across machines (here two launchers on one, each a "node" of one rank): as
MegEngine's, a node's ranks return only once every rank of the job has finished its function."""

import os
import subprocess
import sys

from dist_util import TIMEOUT

import megengine.distributed as dist

# The second node: rank 1 of 2, through the first node's Server. Its function finishes a while
# after the first node's and then leaves a file.
_NODE_1 = """
import sys, time
import megengine.distributed as dist

def work(path):
    time.sleep(1.0)
    with open(path, "w") as f:
        f.write(str(dist.get_rank()))
    return dist.get_rank()

launch = dist.launcher(work, n_gpus=1, world_size=2, rank_start=1, port=int(sys.argv[1]),
                       timeout=float(sys.argv[3]))
print(launch(sys.argv[2]))
"""


def _rank_and_size():
    return dist.get_rank(), dist.get_world_size(), dist.get_client() is not None


def test_a_node_returns_only_when_every_node_has_finished(tmp_path):
    marker = tmp_path / "node1.txt"
    launch = dist.launcher(_rank_and_size, n_gpus=1, world_size=2, timeout=TIMEOUT)
    node1 = subprocess.Popen(
        [sys.executable, "-c", _NODE_1, str(launch.port), str(marker), str(TIMEOUT)],
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert launch() == [(0, 2, True)]
        # Node 1's rank finished its function (and wrote the file) before ours returned.
        assert marker.read_text() == "1"
        out, err = node1.communicate(timeout=60)
        assert node1.returncode == 0, err
        assert out.strip() == "[1]"
    finally:
        node1.kill()
        node1.wait()
