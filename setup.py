"""Build hook: an installed tibench carries what a study needs besides the code.

The notebooks, the example params and the reference data sets live at the top of the repository
(where people open and edit them); a wheel copies them into ``tibenchlib/share/``, where
``tibenchlib.paths`` looks when tibench runs from an installed package. An editable install reads
them in place.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: repository folder → folder under tibenchlib/share/ in the wheel
SHARED = {"notebooks": "notebooks", "params": "params", "data/reference": "reference"}


class BuildPyWithShare(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        here = Path(__file__).resolve().parent
        for src, dst in SHARED.items():
            target = Path(self.build_lib) / "tibenchlib" / "share" / dst
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(
                here / src, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.pyc")
            )


setup(cmdclass={"build_py": BuildPyWithShare})
