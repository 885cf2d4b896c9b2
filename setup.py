"""The optional C part of the PDFium reader (documents/_pdfchars.c). Everything else is in
pyproject.toml. Without a C compiler the build skips it and the reader runs in Python."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "documents._pdfchars",
            ["documents/_pdfchars.c"],
            # Same double arithmetic as the Python reader: no fused multiply-adds.
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        )
    ]
)
