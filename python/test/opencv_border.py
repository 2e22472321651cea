"""The border rule of OpenCV's warps and remap, as the vision tests' NumPy references apply it
(test_vision.py's warp_affine/warp_perspective, test_vision_roi_remap.py's remap)."""


def fold(p, n, mode):
    """OpenCV's border folding of index p on an axis of n, one reflection at a time."""
    if 0 <= p < n:
        return p
    if mode == "constant":
        return None
    if mode == "replicate":
        return min(max(p, 0), n - 1)
    if mode == "wrap":
        return p % n
    if n == 1:
        return 0
    d = 1 if mode == "reflect_101" else 0
    while not 0 <= p < n:
        p = -p - 1 + d if p < 0 else 2 * n - 1 - p - d
    return p
