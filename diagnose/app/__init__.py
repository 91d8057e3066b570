"""What the commands run: the pipeline from a bundle (or a capture) to its reports, put
together from the rooms below (collect, bundle, analyse, verdict, render). The CLI calls
these functions and nothing under them calls back up."""
