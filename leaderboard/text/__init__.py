"""The submitted text: names normalised, compared on their look and escaped for each place they reach
(`submitted_names`), UTS #39's identifier rules (`identifiers`), and the paper's reserved rows (`paper_rows`)."""
