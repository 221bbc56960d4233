"""The GitHub Action's steps (``action.yml``), as testable Python: :mod:`.gha` (the steps),
:mod:`.changes` (which adapters changed), :mod:`.runner` (inputs, outputs, summary),
:mod:`.comment` (the sticky pull-request comment). Stdlib only until the ``install`` step."""
