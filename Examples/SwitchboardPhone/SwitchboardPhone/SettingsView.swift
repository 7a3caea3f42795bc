import SwiftUI
import SwitchboardKit

/// Who is signed in where, this phone's push identity, the server change and sign-out.
@MainActor
struct SettingsView: View {
    @ObservedObject var model: AppModel
    @State private var server = ""
    @State private var creatingAccount = false
    @State private var username = ""
    @State private var password = ""
    @State private var displayName = ""
    @State private var working = false
    @State private var failure: String?

    var body: some View {
        NavigationStack {
            Form {
                Section("Signed in") {
                    LabeledContent("Name", value: model.user?.displayName ?? "")
                    LabeledContent("Username", value: model.user?.username ?? "")
                    LabeledContent("Server", value: model.server?.description ?? "")
                    LabeledContent("Event feed", value: model.feedStatus.rawValue)
                }
                Section("This phone") {
                    LabeledContent("Device id", value: model.deviceID.uuidString.lowercased())
                        .font(.footnote)
                    LabeledContent("Push environment", value: model.pushEnvironment.rawValue)
                }
                changeServerSection
                Section {
                    Button("Sign out", role: .destructive) {
                        Task { await model.signOut() }
                    }
                    .disabled(!model.calls.isEmpty || working)
                }
            }
            .navigationTitle("Settings")
        }
    }

    private var changeServerSection: some View {
        Section {
            ServerField(text: $server)
            CredentialsFields(
                creatingAccount: $creatingAccount, username: $username, password: $password, displayName: $displayName)
            if let failure {
                Text(failure).foregroundStyle(Color.red)
            }
            Button(action: changeServer) {
                HStack {
                    Text("Switch server")
                    if working {
                        Spacer()
                        ProgressView()
                    }
                }
            }
            .disabled(working || !ready || !model.calls.isEmpty)
        } header: {
            Text("Change server")
        } footer: {
            Text(
                "Switching signs you out of this server (it stops ringing this phone), forgets the contacts, calls and "
                    + "event cursor kept for it, and connects the event feed to the new server with the account given here."
            )
        }
    }

    private var ready: Bool {
        (try? ServerAddress(parsing: server)) != nil
            && CredentialsFields.ready(
                creatingAccount: creatingAccount, username: username, password: password, displayName: displayName)
    }

    private func changeServer() {
        let credentials = CredentialsFields.credentials(
            creatingAccount: creatingAccount, username: username, password: password, displayName: displayName)
        working = true
        failure = nil
        Task {
            do {
                try await model.changeServer(to: server, credentials: credentials)
                server = ""
                password = ""
            } catch {
                failure = model.describe(error)
            }
            working = false
        }
    }
}
