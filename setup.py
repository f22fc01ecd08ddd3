"""Installs isaaclab_arena, isaaclab_arena_curobo and isaaclab_arena_environments (Isaac Lab 3.0 extension)."""

from setuptools import find_packages, setup

setup(
    name="isaaclab_arena",
    version="0.1.0",
    description="Relation-based object placement for Isaac Lab 3.0 environments",
    python_requires=">=3.12",
    packages=find_packages(include=["isaaclab_arena*", "isaaclab_arena_curobo*", "isaaclab_arena_environments*"]),
    package_data={
        "isaaclab_arena": ["tests/test_data/*"],
        "isaaclab_arena_environments": ["**/*.yaml", "**/*.usda", "assets/*"],
    },
    include_package_data=True,
    install_requires=["isaaclab==3.0.0", "pyyaml"],
    zip_safe=False,
)
