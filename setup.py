"""The optional C half of the JSON scanner (see patcher/text/_scan.c); the rest is in pyproject.toml.

``optional=True``: where no C compiler is at hand, the install goes on without it and patcher
runs on its pure-Python scanner, the same answers a few times slower. The extension uses only
the stable ABI, so one wheel per platform serves Python 3.11 and later (``cp311-abi3``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "patcher.text._scan",
            ["patcher/text/_scan.c"],
            optional=True,
            py_limited_api=True,  # _scan.c defines Py_LIMITED_API itself
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
