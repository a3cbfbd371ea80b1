"""Extensions that ship with pi-jupyter, as working examples of the extension hooks.

* :mod:`~pi_jupyter.extensions.dataframes`: tells the model which data frames the notebook
  holds (names, shapes, column types), as a ``custom_message`` it sees on purpose.
* :mod:`~pi_jupyter.extensions.audit`: keeps an audit trail of tool calls in ``custom``
  entries, which never reach the model.

Register one with ``agent.extensions.add("pi_jupyter.extensions.audit")`` or, in a notebook,
``%pi ext load pi_jupyter.extensions.audit``. See :mod:`pi_jupyter.agent.extensions`.
"""
