import SwiftUI
import SwitchboardKit

/// Live calls, friends and groups to call, friend requests, and adding a friend.
@MainActor
struct ContactsView: View {
    @ObservedObject var model: AppModel
    @State private var newFriend = ""

    var body: some View {
        NavigationStack {
            List {
                if !model.calls.isEmpty {
                    Section("Calls") {
                        ForEach(model.calls) { row in
                            CallRowView(row: row, model: model)
                        }
                    }
                }
                friendsSection
                if !model.groups.isEmpty {
                    Section("Groups") {
                        ForEach(model.groups, id: \.id) { group in
                            ContactRow(
                                title: group.name, subtitle: "\(group.members.count) members",
                                canCall: model.calls.isEmpty
                            ) {
                                Task { await model.call(group) }
                            }
                        }
                    }
                }
                requestsSections
                Section("Add a friend") {
                    HStack {
                        TextField("Username", text: $newFriend)
                            .textInputAutocapitalization(.never)
                            .autocorrectionDisabled()
                        Button("Send") {
                            let name = newFriend
                            Task {
                                if await model.sendFriendRequest(toUsername: name) { newFriend = "" }
                            }
                        }
                        .disabled(newFriend.trimmingCharacters(in: .whitespaces).isEmpty)
                    }
                }
            }
            .navigationTitle("Contacts")
            .refreshable { await model.refreshContacts() }
            .toolbar {
                ToolbarItem(placement: .primaryAction) {
                    Label(
                        model.feedStatus.rawValue,
                        systemImage: model.feedStatus == .following ? "bolt.horizontal.circle.fill" : "bolt.slash"
                    )
                    .labelStyle(.titleAndIcon)
                    .font(.caption)
                    .foregroundStyle(model.feedStatus == .following ? Color.green : Color.secondary)
                }
            }
        }
    }

    @ViewBuilder private var friendsSection: some View {
        Section("Friends") {
            if model.friends.isEmpty {
                Text("No friends yet: send a request below.")
                    .foregroundStyle(.secondary)
            }
            ForEach(model.friends, id: \.user.id) { friend in
                ContactRow(
                    title: friend.user.displayName, subtitle: "@\(friend.user.username)", canCall: model.calls.isEmpty
                ) {
                    Task { await model.call(friend) }
                }
                .swipeActions {
                    Button(role: .destructive) {
                        Task { await model.remove(friend) }
                    } label: {
                        Label("Remove", systemImage: "person.badge.minus")
                    }
                }
            }
        }
    }

    @ViewBuilder private var requestsSections: some View {
        if !model.requests.incoming.isEmpty {
            Section("Friend requests") {
                ForEach(model.requests.incoming, id: \.id) { request in
                    HStack {
                        Text(request.from.displayName)
                        Spacer()
                        Button("Accept") { Task { await model.accept(request) } }
                            .buttonStyle(.borderless)
                        Button("Decline", role: .destructive) { Task { await model.decline(request) } }
                            .buttonStyle(.borderless)
                    }
                }
            }
        }
        if !model.requests.outgoing.isEmpty {
            Section("Waiting for an answer") {
                ForEach(model.requests.outgoing, id: \.id) { request in
                    HStack {
                        Text(request.to.displayName)
                        Spacer()
                        Button("Withdraw", role: .destructive) { Task { await model.cancel(request) } }
                            .buttonStyle(.borderless)
                    }
                }
            }
        }
    }
}

/// A friend or a group, with its call button.
struct ContactRow: View {
    let title: String
    let subtitle: String
    let canCall: Bool
    let call: () -> Void

    var body: some View {
        HStack {
            VStack(alignment: .leading) {
                Text(title)
                Text(subtitle)
                    .font(.caption)
                    .foregroundStyle(.secondary)
            }
            Spacer()
            Button(action: call) {
                Image(systemName: "phone.fill")
            }
            .buttonStyle(.borderless)
            .disabled(!canCall)
            .accessibilityLabel("Call \(title)")
        }
    }
}

/// A live call: where it stands, and answer, mute and hang-up (all through CallKit).
@MainActor
struct CallRowView: View {
    let row: AppModel.CallRow
    @ObservedObject var model: AppModel

    var body: some View {
        HStack {
            VStack(alignment: .leading) {
                Text(row.name).font(.headline)
                Text(row.status).font(.caption).foregroundStyle(.secondary)
            }
            Spacer()
            if row.canAnswer {
                Button {
                    model.answer(row)
                } label: {
                    Image(systemName: "phone.fill")
                }
                .tint(.green)
                .accessibilityLabel("Answer")
            }
            Button {
                model.toggleMute(row)
            } label: {
                Image(systemName: row.muted ? "mic.slash.fill" : "mic.fill")
            }
            .accessibilityLabel(row.muted ? "Unmute" : "Mute")
            Button(role: .destructive) {
                model.end(row)
            } label: {
                Image(systemName: "phone.down.fill")
            }
            .accessibilityLabel("End call")
        }
        .buttonStyle(.bordered)
    }
}
