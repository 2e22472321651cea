"""The x86 kernels of the vision and quantization operators against naive and PyTorch 2.x.

One command prints, per case, NeoMeg's x86 kernel, NeoMeg's naive reference kernel
(NEOMEG_BACKEND=naive) and PyTorch's time, and the x86 kernel's speed-up over each (above 1.0:
the x86 kernel is faster): ROIAlign (torchvision.ops.roi_align, aligned, 2x2 samples) and
ROIPooling (torchvision.ops.roi_pool, max) of 128 rois into 7x7 over 2x64x50x50 features,
deformable convolution (torchvision.ops.deform_conv2d, DCNv2 with a mask) 32->32 3x3 on
4x32x28x28, Remap on 4x32x64x64 (F.grid_sample, bilinear, border padding: the same samples
as replicate; forward+backward takes the gradients of the image and of the map, PyTorch's grid,
in both frameworks), WarpPerspective of the same images through four perspective matrices into
64x64 (PyTorch has none: F.grid_sample on the grid the matrices project, computed in the call so
that forward+backward reaches the matrices as MegEngine's matrix gradient does), FakeQuant / LSQ on 32x64x56x56 (torch.fake_quantize_per_tensor_affine and
torch._fake_quantize_learnable_per_tensor_affine), Correlation (FlowNet's, 1x1 windows, 81
displacements over 1x64x32x48) and DeformablePSROIPooling (the 128 rois into 7x7, 2x2 samples,
with offsets), each forward alone and forward+backward. PyTorch's column is empty where
torchvision is missing (bench/setup_reference.sh installs it) and for the last two, which
PyTorch lacks.
Each framework runs in a process of its own on the same number of threads, one table per
thread count (1 and 2 by default); on a shared machine each worker runs --rounds times,
interleaved: the table shows each column's best round, the ratios compare best rounds, and the
x86 and PyTorch columns' medians over the rounds follow (a noisy machine shows as a wide gap).

    PYTHONPATH=python python3 bench/x86_vision_ops.py [--threads 1 2] [--repeat 5]
                                                      [--rounds 3] [--cases roi_align]
                                                      [--no-naive]
"""

import argparse
import os
import sys

from machine import describe

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import statistics

from x86_ops import TORCH_PYTHON, run_worker  # the worker runner, shared

# One timed case per call: argv is framework (neomeg, naive or torch), case, repeat, threads;
# prints seconds per call (the best of `repeat`).
WORKER = r"""
import json, os, resource, sys, time
import numpy as np

fw, case, repeat, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
feat = rng.normal(size=(2, 64, 50, 50)).astype(np.float32)
xy = rng.uniform(0, 45, size=(128, 2))
wh = rng.uniform(2, 20, size=(128, 2))
rois = np.concatenate([np.arange(128)[:, None] % 2, xy, xy + wh], 1).astype(np.float32)
dx = rng.normal(size=(4, 32, 28, 28)).astype(np.float32)
dw = (rng.normal(size=(32, 32, 3, 3)) * 0.1).astype(np.float32)
doff = rng.uniform(-2, 2, size=(4, 18, 28, 28)).astype(np.float32)
dmask = rng.uniform(0, 1, size=(4, 9, 28, 28)).astype(np.float32)
rx = rng.normal(size=(4, 32, 64, 64)).astype(np.float32)
rmap = rng.uniform(-2, 65, size=(4, 64, 64, 2)).astype(np.float32)
# WarpPerspective's matrices (output pixel (w, h, 1) -> source): a rotation, scale and shift with
# perspective terms, a few pixels past the edges.
ang = rng.uniform(-0.3, 0.3, size=4)
sc = rng.uniform(0.9, 1.1, size=4)
wmat = np.zeros((4, 3, 3), np.float32)
wmat[:, 0, 0], wmat[:, 0, 1] = sc * np.cos(ang), -sc * np.sin(ang)
wmat[:, 1, 0], wmat[:, 1, 1] = sc * np.sin(ang), sc * np.cos(ang)
wmat[:, :2, 2] = rng.uniform(-4, 4, size=(4, 2))
wmat[:, 2, :2] = rng.uniform(-1e-3, 1e-3, size=(4, 2))
wmat[:, 2, 2] = 1
qx = rng.normal(size=(32, 64, 56, 56)).astype(np.float32)
c1 = rng.normal(size=(1, 64, 32, 48)).astype(np.float32)
c2 = rng.normal(size=(1, 64, 32, 48)).astype(np.float32)
ptrans = rng.uniform(-1, 1, size=(128, 2, 7, 7)).astype(np.float32)

if fw in ("neomeg", "naive"):
    if fw == "naive":
        os.environ["NEOMEG_BACKEND"] = "naive"
    import megengine as mge
    import megengine.functional as F
    from megengine.autodiff import GradManager
    from megengine.quantization import create_qparams, fake_quant_tensor
    from megengine.quantization.utils import lsq_forward

    T = mge.Tensor
    qp = create_qparams(dtype_meta="qint8", scale=T(0.05))

    def fwd_bwd(f, *xs):
        def g():
            ts = [T(v) for v in xs]
            gm = GradManager().attach(ts)
            with gm:
                y = f(*ts)
                gm.backward(y, F.ones_like(y))
        return g

    roi = T(rois)
    cases = {
        "roi_align": lambda: F.vision.roi_align(x_feat, roi, (7, 7), sample_points=2),
        "roi_align_fwd_bwd": fwd_bwd(
            lambda a: F.vision.roi_align(a, roi, (7, 7), sample_points=2), feat),
        "roi_pool": lambda: F.vision.roi_pooling(x_feat, roi, (7, 7)),
        "roi_pool_fwd_bwd": fwd_bwd(lambda a: F.vision.roi_pooling(a, roi, (7, 7)), feat),
        "deform_conv": lambda: F.deformable_conv2d(x_d, w_d, o_d, m_d, padding=1),
        "deform_conv_fwd_bwd": fwd_bwd(
            lambda a, w, o, m: F.deformable_conv2d(a, w, o, m, padding=1), dx, dw, doff, dmask),
        "remap": lambda: F.vision.remap(x_r, m_r),
        "remap_fwd_bwd": fwd_bwd(lambda a, m: F.vision.remap(a, m), rx, rmap),
        "warp_perspective": lambda: F.vision.warp_perspective(x_r, w_m, (64, 64)),
        "warp_perspective_fwd_bwd": fwd_bwd(
            lambda a, m: F.vision.warp_perspective(a, m, (64, 64)), rx, wmat),
        "fake_quant": lambda: fake_quant_tensor(x_q, qp),
        "fake_quant_fwd_bwd": fwd_bwd(lambda a: fake_quant_tensor(a, qp), qx),
        "lsq_fwd_bwd": fwd_bwd(lambda a, s: lsq_forward(-128, 127, a, s),
                               qx, np.float32(0.05)),
        "correlation": lambda: F.vision.correlation(T(c1), T(c2), 1, 4, 1, 1, 4),
        "correlation_fwd_bwd": fwd_bwd(
            lambda a, b: F.vision.correlation(a, b, 1, 4, 1, 1, 4), c1, c2),
        "psroi": lambda: F.deformable_psroi_pooling(x_feat, roi, T(ptrans), False, 7, 7, 7, 2,
                                                    1.0),
        "psroi_fwd_bwd": fwd_bwd(
            lambda a, t: F.deformable_psroi_pooling(a, roi, t, False, 7, 7, 7, 2, 1.0),
            feat, ptrans),
    }
    x_feat, x_d, w_d, o_d, m_d = T(feat), T(dx), T(dw), T(doff), T(dmask)
    x_r, m_r, x_q, w_m = T(rx), T(rmap), T(qx), T(wmat)
    # The work queued is done (CPU kernels run as they are called; GPU ones are waited for),
    # without copying the output to NumPy, a copy PyTorch's column does not make.
    sync = lambda y: mge._full_sync()
else:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    try:
        from torchvision.ops import deform_conv2d, roi_align, roi_pool
    except ImportError:
        print("torchvision is not installed", file=sys.stderr)
        sys.exit(1)
    roi = torch.tensor(rois)
    # grid_sample's normalised coordinates of remap's pixel points (align_corners=True: -1 and 1
    # are the first and last pixels' centres).
    grid = torch.tensor(rmap) / torch.tensor([63.0, 63.0]) * 2 - 1
    grid_np = grid.numpy()

    def fwd_bwd(f, *xs):
        def g():
            ts = [torch.tensor(v).requires_grad_() for v in xs]
            y = f(*ts)
            y.backward(torch.ones_like(y))
        return g

    def no_grad(f):
        def g():
            with torch.no_grad():
                return f()
        return g

    t = {k: torch.tensor(v) for k, v in dict(feat=feat, dx=dx, dw=dw, doff=doff, dmask=dmask,
                                                  rx=rx, qx=qx).items()}
    ra = lambda a: roi_align(a, roi, (7, 7), 1.0, 2, aligned=True)
    dc = lambda a, w, o, m: deform_conv2d(a, o, w, padding=1, mask=m)
    rm = lambda a, g: F.grid_sample(a, g, "bilinear", "border", align_corners=True)
    # PyTorch has no WarpPerspective: its closest is grid_sample on the grid the matrices project
    # (the output pixels through each matrix, normalised as remap's), built from the matrices in
    # every call so that the backward reaches them, as kornia's warp_perspective does.
    hw = torch.stack(torch.meshgrid(torch.arange(64.0), torch.arange(64.0), indexing="ij"), -1)
    pix = torch.cat([hw.flip(-1), torch.ones(64, 64, 1)], -1).reshape(-1, 3)  # (w, h, 1)

    def wp(a, m):
        p = pix @ m.transpose(1, 2)
        g = (p[..., :2] / p[..., 2:]) / 63.0 * 2 - 1
        return rm(a, g.reshape(-1, 64, 64, 2))

    fq = lambda a: torch.fake_quantize_per_tensor_affine(a, 0.05, 0, -128, 127)
    lsq = lambda a, s: torch._fake_quantize_learnable_per_tensor_affine(
        a, s, torch.zeros(1), -128, 127, 1.0)
    cases = {
        "roi_align": no_grad(lambda: ra(t["feat"])),
        "roi_align_fwd_bwd": fwd_bwd(ra, feat),
        "roi_pool": no_grad(lambda: roi_pool(t["feat"], roi, (7, 7), 1.0)),
        "roi_pool_fwd_bwd": fwd_bwd(lambda a: roi_pool(a, roi, (7, 7), 1.0), feat),
        "deform_conv": no_grad(lambda: dc(t["dx"], t["dw"], t["doff"], t["dmask"])),
        "deform_conv_fwd_bwd": fwd_bwd(dc, dx, dw, doff, dmask),
        "remap": no_grad(lambda: rm(t["rx"], grid)),
        "remap_fwd_bwd": fwd_bwd(rm, rx, grid_np),
        "warp_perspective": no_grad(lambda: wp(t["rx"], torch.tensor(wmat))),
        "warp_perspective_fwd_bwd": fwd_bwd(wp, rx, wmat),
        "fake_quant": no_grad(lambda: fq(t["qx"])),
        "fake_quant_fwd_bwd": fwd_bwd(fq, qx),
        "lsq_fwd_bwd": fwd_bwd(lsq, qx, np.array([0.05], np.float32)),
    }
    sync = lambda y: y

f = cases[case]
sync(f())  # warm-up: plans are made on the first call
times = []
for _ in range(repeat):
    t0 = time.perf_counter()
    sync(f())
    times.append(time.perf_counter() - t0)
print(json.dumps({"seconds": min(times),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CASES = [
    "roi_align",
    "roi_align_fwd_bwd",
    "roi_pool",
    "roi_pool_fwd_bwd",
    "deform_conv",
    "deform_conv_fwd_bwd",
    "remap",
    "remap_fwd_bwd",
    "warp_perspective",
    "warp_perspective_fwd_bwd",
    "fake_quant",
    "fake_quant_fwd_bwd",
    "lsq_fwd_bwd",
    "correlation",
    "correlation_fwd_bwd",
    "psroi",
    "psroi_fwd_bwd",
]


def rounds_of(args, runs):
    """Each run's seconds over args.rounds interleaved rounds (empty where it failed), and why."""
    secs = [[] for _ in runs]
    why = None
    for _ in range(args.rounds):
        for i, run in enumerate(runs):
            res, err = run_worker(*run)
            if res is None:
                why = err
            else:
                secs[i].append(res["seconds"] * 1e3)
    return secs, why


def print_table(args, threads):
    print(f"{threads} thread(s)")
    head = f"{'case (ms)':<22}{'x86':>10}{'naive':>11}{'PyTorch':>10}{'/naive':>9}{'/torch':>9}"
    print(head + f"{'x86 med':>10}{'torch med':>11}")
    for case in args.cases:
        wargs = [case, str(args.repeat), str(threads)]
        ours = ["neomeg"] if args.no_naive else ["neomeg", "naive"]
        runs = [(sys.executable, WORKER, [fw, *wargs], threads) for fw in ours] + [
            (args.torch_python, WORKER, ["torch", *wargs], threads)
        ]
        secs, why = rounds_of(args, runs)
        ours, naive, theirs = (secs[0], [], secs[1]) if args.no_naive else secs
        if not ours:
            print(f"{case:<22} failed: {why}")
            continue
        o = min(ours)
        cells = [f"{o:>10.3f}"]
        ratios = []
        for ref, width in ((naive, 11), (theirs, 10)):
            if not ref:
                cells.append(f"{'-':>{width}}")
                ratios.append(f"{'-':>9}")
            else:
                cells.append(f"{min(ref):>{width}.3f}")
                ratios.append(f"{min(ref) / o:>9.2f}")
        meds = f"{statistics.median(ours):>10.3f}"
        meds += f"{statistics.median(theirs):>11.3f}" if theirs else f"{'-':>11}"
        print(f"{case:<22}{''.join(cells)}{''.join(ratios)}{meds}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=CASES)
    ap.add_argument("--torch-python", default=TORCH_PYTHON)
    # naive's column takes most of a run's time; its kernels do not change with the x86 ones.
    ap.add_argument("--no-naive", action="store_true", help="leave naive's column out")
    args = ap.parse_args()
    print(describe())
    if min(args.threads) < 1:
        ap.error("--threads must be positive")
    for threads in args.threads:
        print_table(args, threads)
    print("/naive, /torch = their time / the x86 kernel's (above 1.0: the x86 kernel is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
