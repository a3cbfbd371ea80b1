// Insert a code cell below the cell an output sits in (joined into the AgentView's and the page
// bridge's modules). JupyterLab and Notebook 7 give a widget's model its notebook's document
// context (`widget_manager.context`, public in @jupyter-widgets/jupyterlab-manager); where a
// front end offers none (VS Code, an exported page), the caller copies the code instead.

/** Insert `source` as a new code cell below the cell holding `node`; true when the notebook took it. */
function insertCodeCell(model, node, source) {
  const manager = model && model.widget_manager;
  const context = manager && manager.context;
  const notebook = context && context.model && context.model.sharedModel;
  const cell = node && node.closest ? node.closest(".jp-Cell") : null;
  if (!notebook || typeof notebook.insertCell !== "function" || !cell) return false;
  let index = Number(cell.dataset.windowedListIndex);
  if (!Number.isInteger(index)) index = [...cell.parentElement.children].filter((c) => c.classList.contains("jp-Cell")).indexOf(cell);
  if (index < 0) return false;
  notebook.insertCell(index + 1, { cell_type: "code", source: String(source).replace(/\s+$/, "") });
  return true;
}

/** Copy `text` to the clipboard; resolves to true when it worked. */
function copyText(text) {
  try {
    if (navigator.clipboard && navigator.clipboard.writeText) return navigator.clipboard.writeText(text).then(() => true, () => false);
  } catch (_e) {
    // no clipboard here
  }
  return Promise.resolve(false);
}
