import pytest

from diagnose.analyse.frames import frame_rules, is_native_frame, split_frame

FR = frame_rules()


@pytest.mark.parametrize(
    ("stack", "category"),
    [
        (("handle (serve.py:40)", "preprocess_image (serve.py:12)"), "preprocess"),
        (
            ("handle (serve.py:40)", "encode_batch (/x/tokenizers/implementations/base.py:9)"),
            "preprocess",
        ),
        (
            ("handle (serve.py:40)", "loads (/usr/lib/python3.11/json/__init__.py:346)"),
            "preprocess",
        ),
        (
            ("handle (serve.py:40)", "dumps (/usr/lib/python3.11/json/__init__.py:231)"),
            "serialisation",
        ),
        # native kernel below a Python model call: the leaf-most native category wins
        (
            (
                "predict (serve.py:20)",
                "_PyEval_EvalFrameDefault (libpython3.11.so.1.0)",
                "cblas_sgemm (libscipy_openblas64_.so)",
                "sgemm_kernel_HASWELL (libscipy_openblas64_.so)",
            ),
            "compute",
        ),
        (
            (
                "predict (serve.py:20)",
                "PyArray_NewCopy (_multiarray_umath.cpython-311-x86_64-linux-gnu.so)",
                "__memmove_avx_unaligned_erms (libc.so.6)",
            ),
            "memory",
        ),
        # einsum's own contraction loop reuses its operands (arithmetic, optimize=True is the
        # fix); a dot or a GEMV reads each element once (memory)
        (("pool (svc.py:44)", "double_sum_of_products_muladd (_multiarray_umath.so)"), "compute"),
        (
            ("pool (svc.py:44)", "FLOAT_sum_of_products_contig_two (_multiarray_umath.so)"),
            "compute",
        ),
        (("pool (svc.py:49)", "DOUBLE_dot (_multiarray_umath.so)"), "memory"),
        # top-k by np.argpartition / np.sort: comparisons on data the kernel reuses
        (
            (
                "search (svc.py:52)",
                "argpartition_unrolled<ymm_vector<float>, zmm_vector<unsigned long>, 4, float>"
                " (_multiarray_umath.cpython-311-x86_64-linux-gnu.so)",
            ),
            "compute",
        ),
        (("search (svc.py:52)", "np::qsort_simd::ArgQSelect_X86_V4<float> (_m.so)"), "compute"),
        (("rank (svc.py:60)", "quicksort_<npy::float_tag, float> (_m.so)"), "compute"),
        # CPython's own list.sort is the interpreter's work, not a numeric kernel
        (("rank (svc.py:61)", "unsafe_tuple_compare (libpython3.11.so.1.0)"), "other"),
        (("pool (svc.py:49)", "sgemv_kernel_4x8 (libscipy_openblas64_.so)"), "memory"),
        (("predict (serve.py:20)", "_int_malloc (libc.so.6)"), "allocator"),
        (("handle (serve.py:40)", "asm_exc_page_fault ([kernel.kallsyms])"), "allocator"),
        # preprocessing stage wins over the kernel that does it
        (("preprocess (serve.py:10)", "ImagingResample (_imaging.cpython-311.so)"), "preprocess"),
        # model call without native frames: the kernel type is unknown
        (
            (
                "handle (serve.py:40)",
                "run (/x/onnxruntime/capi/onnxruntime_inference_collection.py:220)",
            ),
            "model",
        ),
        # py-spy 0.4 qualifies methods with their class
        (
            (
                "handle (serve.py:31)",
                "Session.run (/x/onnxruntime/capi/onnxruntime_inference_collection.py:406)",
            ),
            "model",
        ),
        (
            (
                "handle (serve.py:40)",
                "TransformerEncoder.forward (/x/torch/nn/modules/transformer.py:200)",
            ),
            "model",
        ),
        (("handle (serve.py:40)", "compute_score (serve.py:30)"), "other"),
        ((), "other"),
    ],
)
def test_categories(stack, category):
    assert FR.categorize(stack) == category


@pytest.mark.parametrize(
    ("leaf", "kind"),
    [
        ("Condition.wait (/usr/lib/python3.11/threading.py:320)", "idle"),
        ("wait (threading.py:300)", "idle"),
        ("Queue.get (/usr/lib/python3.11/queue.py:171)", "idle"),
        ("handle (serve.py:42)", None),
        ("Semaphore.acquire (/usr/lib/python3.11/threading.py:500)", "lock"),
        ("HTTPResponse.begin (/usr/lib/python3.11/http/client.py:300)", "io"),
        ("time.sleep (x.py:1)", "idle"),
    ],
)
def test_wait_kinds(leaf, kind):
    assert FR.wait_kind(leaf) == kind


def test_frame_helpers():
    assert split_frame("f (a/b.py:12)") == ("f", "a/b.py")
    assert split_frame("memcpy (libc.so.6)") == ("memcpy", "libc.so.6")
    assert split_frame("weird") == ("weird", "")
    assert is_native_frame("memcpy (libc.so.6)")
    assert not is_native_frame("f (a/b.py:12)")


TORCH = "Module._call_impl (/venv/lib/python3.11/site-packages/torch/nn/modules/module.py:1527)"
ORT = "run (/venv/lib/python3.11/site-packages/onnxruntime/capi/onnxruntime_inference_collection.py:220)"
NUMPY_DOT = "dot (/venv/lib/python3.11/site-packages/numpy/core/multiarray.py:741)"


@pytest.mark.parametrize(
    ("stack", "framework"),
    [
        # a torch module's call and onnxruntime's binding: by their libraries
        (("handler (app.py:10)", TORCH, "mkl_blas_sgemm (libtorch_cpu.so)"), True),
        (("score (app.py:9)", ORT, "MlasSgemmKernel (onnxruntime_pybind11_state.so)"), True),
        # near misses: a class named *Model in the service's own file, NumPy's BLAS
        (("ScorerModel.__call__ (app.py:30)", "dgemm_kernel (libopenblas64_p-r0.3.27.so)"), False),
        (("search (app.py:35)", NUMPY_DOT, "sgemm_kernel (libscipy_openblas64_.so)"), False),
    ],
)
def test_a_model_framework_is_known_by_its_library_never_by_a_name(stack, framework):
    assert FR.in_framework(stack) is framework
