# pi-jupyter: every `jupyter nbconvert` export shows the static rendering of pi outputs (the tree as a
# picture, the transcript), never an empty widget; the wheel installs this file into {prefix}/etc/jupyter.
# nbconvert reads no jupyter_nbconvert_config.d folder, hence one Python file: it inserts into the
# configured lists instead of replacing them (as JSON would), and does nothing without pi_jupyter.
from importlib.util import find_spec

if find_spec("pi_jupyter") is not None:
    from pi_jupyter.notebook.durable.nbconvert import enable

    enable(get_config())  # noqa: F821 - traitlets provides it to config files
