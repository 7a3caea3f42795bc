// The server's persistence (repositories, schemas, Principal) is part of what embedding code
// and the server's tests see.
@_exported import SwitchboardPersistence
