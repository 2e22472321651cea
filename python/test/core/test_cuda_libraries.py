"""cuBLAS and cuDNN are found at run time: the extension links neither (nor the CUDA runtime's
shared library), ``import megengine`` and CPU operators never load them, a missing library gives
an error naming the file, and a library of another version an error naming both versions. Runs
without a GPU; the parts that need one are taken where one is present."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import megengine as mge
from megengine.core import _imperative_rt as _rt

REPO = pathlib.Path(__file__).resolve().parents[3]
built_with_cuda = pytest.mark.skipif(
    mge.get_cuda_version() == -1, reason="NeoMeg was built without CUDA"
)


def run_python(code, **env_vars):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **env_vars)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
    )


def neomeg_libraries():
    """The extension and every library of NeoMeg's it loads, as ldd resolves them."""
    ext = pathlib.Path(_rt.__file__)
    out = subprocess.run(["ldd", str(ext)], check=True, capture_output=True, text=True).stdout
    libs = [ext]
    for line in out.splitlines():
        parts = line.split("=>")
        if len(parts) == 2 and "libneomeg_" in parts[0]:
            libs.append(pathlib.Path(parts[1].split("(")[0].strip()))
    return libs, out


@built_with_cuda
@pytest.mark.skipif(shutil.which("ldd") is None, reason="no ldd")
def test_extension_does_not_link_cuda_libraries():
    libs, out = neomeg_libraries()
    assert any("libneomeg_dnn" in str(p) for p in libs), out  # the CUDA kernels' library
    for lib in libs:
        deps = subprocess.run(["ldd", str(lib)], check=True, capture_output=True, text=True).stdout
        for name in ("libcudart", "libcublas", "libcudnn", "libnccl"):
            assert name not in deps, f"{lib} links {name}:\n{deps}"


@built_with_cuda
def test_import_and_cpu_ops_work_without_the_libraries():
    r = run_python(
        """
        import megengine as mge
        import megengine.functional as F
        from megengine.core import _imperative_rt as rt

        x = mge.Tensor([[-1.0, 2.0], [3.0, -4.0]])
        w = mge.Tensor([[1.0, 0.0], [0.0, 1.0]])
        assert F.relu(F.matmul(x, w)).numpy().tolist() == [[0.0, 2.0], [3.0, 0.0]]
        img = mge.Tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        assert F.conv2d(img, mge.Tensor([[[[1.0]]]])).numpy().sum() == 10.0
        maps = open("/proc/self/maps").read()
        assert "libcudnn" not in maps and "libcublas" not in maps  # nothing asked for them
        print(rt.cuda_library_error("cudnn"))
        print(rt.cuda_library_error("cublas"))
        print(rt.cuda_library_file("cudnn") or "-", mge.get_cudnn_version(),
              rt.get_cudnn_runtime_version())
        if mge.is_cuda_available():
            # A GPU operator that needs a missing library names it.
            for fn, lib in ((lambda: F.conv2d(img.to("gpu0"), mge.Tensor([[[[1.0]]]], device="gpu0")), "libcudnn"),
                            (lambda: F.matmul(x.to("gpu0"), w.to("gpu0")), "libcublas")):
                try:
                    fn().numpy()
                except RuntimeError as e:
                    assert "/nonexistent/" + lib in str(e), e
                else:
                    raise AssertionError(lib + " was not needed")
        else:
            assert mge.get_device_count("gpu") == 0
            try:
                x.to("gpu0")
            except RuntimeError as e:
                assert "gpu0" in str(e), e
            else:
                raise AssertionError("gpu0 loaded without a GPU")
        print("ok")
        """,
        NEOMEG_CUDNN_LIBRARY="/nonexistent/libcudnn.so.9",
        NEOMEG_CUBLAS_LIBRARY="/nonexistent/libcublas.so.13",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    cudnn_error, cublas_error, versions, ok = r.stdout.splitlines()
    assert cudnn_error.startswith("cuDNN could not be loaded (/nonexistent/libcudnn.so.9")
    assert "NEOMEG_CUDNN_LIBRARY" in cudnn_error
    assert cublas_error.startswith("cuBLAS could not be loaded (/nonexistent/libcublas.so.13")
    # No file loaded, the build's version still known, no version found.
    assert versions == f"- {mge.get_cudnn_version()} -1"
    assert ok == "ok"


@built_with_cuda
def test_installed_libraries_load_on_first_use():
    if os.environ.get("NEOMEG_CUDNN_LIBRARY") or os.environ.get("NEOMEG_CUBLAS_LIBRARY"):
        pytest.skip(
            "NEOMEG_CUDNN_LIBRARY or NEOMEG_CUBLAS_LIBRARY is set: this test checks the default sonames"
        )
    assert _rt.cuda_library_error("cudnn") == ""
    assert _rt.cuda_library_error("cublas") == ""
    assert _rt.cuda_library_file("cudnn").endswith(
        f"libcudnn.so.{mge.get_cudnn_version() // 10000}"
    )
    assert _rt.get_cudnn_runtime_version() // 10000 == mge.get_cudnn_version() // 10000
    with pytest.raises(ValueError, match="unknown CUDA library cufft: expected .*cusolver"):
        _rt.cuda_library_error("cufft")


@built_with_cuda
def test_version_mismatch_names_both_versions(tmp_path):
    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler to build a stand-in cuDNN")
    fake = tmp_path / "libcudnn.so.8"
    src = REPO / "dnn/test/cuda/fake_libraries/fake_cudnn.cpp"
    subprocess.run([cxx, "-shared", "-fPIC", "-o", str(fake), str(src)], check=True)
    r = run_python(
        """
        import megengine as mge
        from megengine.core import _imperative_rt as rt
        print(rt.cuda_library_error("cudnn"))
        print(rt.get_cudnn_runtime_version())
        if mge.is_cuda_available():
            try:
                mge.Tensor([1.0]).to("gpu0")
            except RuntimeError as e:
                assert "8.9.7" in str(e), e
            else:
                raise AssertionError("gpu0 loaded with a mismatched cuDNN")
        """,
        NEOMEG_CUDNN_LIBRARY=str(fake),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    error, found = r.stdout.splitlines()
    built = mge.get_cudnn_version()
    assert error == (
        f"cuDNN version mismatch: NeoMeg was built with cuDNN {built // 10000}."
        f"{built // 100 % 100}.{built % 100} but the cuDNN found at run time is 8.9.7 ({fake})"
    )
    assert found == "80907"


@built_with_cuda
def test_cusolver_loads_on_first_use():
    if os.environ.get("NEOMEG_CUSOLVER_LIBRARY"):
        pytest.skip("NEOMEG_CUSOLVER_LIBRARY is set: this test checks the default soname")
    r = run_python(
        """
        import megengine as mge
        import megengine.functional as F
        from megengine.core import _imperative_rt as rt

        F.svd(mge.Tensor([[3.0, 0.0], [0.0, 4.0]]))  # a CPU SVD does not load it
        assert "libcusolver" not in open("/proc/self/maps").read()
        print(repr(rt.cuda_library_error("cusolver")))
        print(rt.cuda_library_file("cusolver"))
        assert "libcusolver" in open("/proc/self/maps").read()
        """
    )
    assert r.returncode == 0, r.stdout + r.stderr
    error, file = r.stdout.splitlines()
    assert error == "''"
    # The soname of a major version, as the loader found it (libcusolver.so.12 for CUDA 13).
    assert re.fullmatch(r".*libcusolver\.so\.\d+", file), file


@built_with_cuda
def test_missing_cusolver_is_named():
    r = run_python(
        """
        from megengine.core import _imperative_rt as rt
        print(rt.cuda_library_error("cusolver"))
        print(rt.cuda_library_file("cusolver") or "-")
        """,
        NEOMEG_CUSOLVER_LIBRARY="/nonexistent/libcusolver.so.12",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    error, file = r.stdout.splitlines()
    assert error.startswith("cuSOLVER could not be loaded (/nonexistent/libcusolver.so.12"), error
    assert "NEOMEG_CUSOLVER_LIBRARY" in error
    assert file == "-"


@built_with_cuda
def test_cusolver_version_mismatch_names_both_versions(tmp_path):
    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler to build a stand-in cuSOLVER")
    fake = tmp_path / "libcusolver.so.11"
    src = REPO / "dnn/test/cuda/fake_libraries/fake_cusolver.cpp"
    subprocess.run([cxx, "-shared", "-fPIC", "-o", str(fake), str(src)], check=True)
    r = run_python(
        """
        from megengine.core import _imperative_rt as rt
        print(rt.cuda_library_error("cusolver"))
        """,
        NEOMEG_CUSOLVER_LIBRARY=str(fake),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    (error,) = r.stdout.splitlines()
    assert re.fullmatch(
        r"cuSOLVER version mismatch: NeoMeg was built with cuSOLVER \d+\.\d+\.\d+ but the "
        rf"cuSOLVER found at run time is 11\.7\.5 \({re.escape(str(fake))}\)",
        error,
    ), error
