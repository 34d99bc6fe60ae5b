"""xdpvhost benchmark harness: topology, backends, guest, load
tools, scenarios, records, summary and plots. Entry point: bench/run.py."""
