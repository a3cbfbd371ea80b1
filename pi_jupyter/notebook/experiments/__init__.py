"""Experiments in a notebook: ``%%pi --vary`` grids with their live view, and ``%pi judge``.

Owns the grid cell (:mod:`.cell`), its live view (:mod:`.view`) and blind judging (:mod:`.judge_command`,
:mod:`.judge_view`). The grids themselves run in :mod:`pi_jupyter.experiment`.
"""
