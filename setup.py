"""setuptools hooks: the cffi extensions (the shim, the XPlane codecs) and the I/O tab's bundle;
metadata lives in pyproject.toml.

The bundle (``tb_iotrace/plugin/frontend-build/index.js``, the one file TensorBoard loads for the tab) is a
build output of ``plugin_frontend/`` made by ``node tools/bundle_frontend.mjs``: ``build_py`` (every
wheel, editable installs included) and ``build_ext`` (``python setup.py build_ext --inplace``) run
it first. Without node, an already built bundle (an sdist carries one) is used; with neither, the
build stops and says so.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from setuptools import Command, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = os.path.dirname(os.path.abspath(__file__))
BUNDLER = os.path.join("tools", "bundle_frontend.mjs")
BUNDLE = os.path.join("tb_iotrace", "plugin", "frontend-build", "index.js")


class build_frontend(Command):
    """Writes the I/O tab's bundle (tools/bundle_frontend.mjs) into the package tree."""

    description = "bundle plugin_frontend/ into tb_iotrace/plugin/frontend-build/index.js (needs node)"
    user_options: list = []

    def initialize_options(self) -> None:
        pass

    def finalize_options(self) -> None:
        pass

    def run(self) -> None:
        node = shutil.which("node")
        script = os.path.join(ROOT, BUNDLER)
        if node and os.path.isfile(script):
            subprocess.run([node, script], cwd=ROOT, check=True)
        elif os.path.isfile(os.path.join(ROOT, BUNDLE)):
            self.announce(f"node not found: using the bundle already built at {BUNDLE}", level=2)
        else:
            raise SystemExit(f"building tb_iotrace needs node (nodejs) to write {BUNDLE} "
                             f"from plugin_frontend/ ({BUNDLER})")


class build_py_with_frontend(build_py):
    def run(self) -> None:
        self.run_command("build_frontend")
        super().run()


class build_ext_with_frontend(build_ext):
    def run(self) -> None:
        self.run_command("build_frontend")
        super().run()


class sdist_with_frontend(sdist):
    """An sdist carries the built bundle (not the bundler): its wheels build without node."""

    def run(self) -> None:
        self.run_command("build_frontend")
        super().run()


setup(
    cffi_modules=["native/build_ffi.py:ffibuilder", "native/build_codec.py:ffibuilder"],
    cmdclass={"build_frontend": build_frontend, "build_py": build_py_with_frontend,
              "build_ext": build_ext_with_frontend, "sdist": sdist_with_frontend},
)
