"""The providers file as the controller uses it: the last good version, the credential files its
entries name, and how its problems are told to users."""
