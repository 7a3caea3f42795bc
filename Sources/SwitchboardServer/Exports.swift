// The store's repositories, schemas and records (Principal among them) are part of what
// embedding code and the server's tests see.
@_exported import SwitchboardStore
