"""Cases and assertions: from a case file to the checks each sample gets."""
