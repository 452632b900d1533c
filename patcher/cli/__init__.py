"""The typer CLI: parse, call one library function, render. Nothing below imports it."""
