"""Outputs that outlive the kernel (DESIGN decision 6): what a saved, reopened or exported notebook shows.

Owns which output types read without a kernel (:mod:`.outputs`), pictures every viewer draws
(:mod:`.pictures`), the server's save hook (:mod:`.save_hook`), nbconvert's preprocessor and readers
(:mod:`.nbconvert`, :mod:`.readers`) and the page bridge that lets finished outputs act while the kernel
lives (:mod:`.page_bridge`). The static renderings themselves come from :mod:`pi_jupyter.views`.
"""
