"""The watch in a browser: ``pinetime-emu run FIRMWARE --web PORT``.

- :mod:`frontends.web.view`: the emulator's side (:class:`WebView`,
  :func:`run_web`): runs the machine paced to the wall clock, applies what
  the browsers send between slices, publishes frames, status and console
  output;
- :mod:`frontends.web.server`: the page and its WebSocket on one port
  (``websockets``), in a thread of its own that never touches the machine;
- ``static/``: the page (HTML, JavaScript, CSS; no build step, no plug-ins),
  shipped as package data.

The protocol (JSON text messages; frames as binary messages) is described
in docs/web.md.
"""
